"""Memory lifecycle algorithms: retention resolution, density classification, extractive
preservation, abstractive summarisation and the consolidation strategies.

Pure package (no Django import): the services in ``memory/services/`` load memories, call
these and write the results.
"""
