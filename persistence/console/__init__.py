"""The operator console's shell: login, company switcher, role checks shared by every app's
console pages (``<app>/console/``). Pages call services; nothing here writes models."""
