"""The autonomous skill evolver: patterns across many agents' execution reports become
org-wide skill *proposals* — ApprovalItems for a human. It has no write path to org memory;
only an approved item, applied by the approval service, publishes a skill."""
