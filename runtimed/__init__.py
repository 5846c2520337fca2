"""runtimed: the per-Runtime-Pod worker (execution, staging, artifact stores, workspace bytes).

Deliberately not a Django app: it never touches the database and imports no portal app, so
no database credentials or authorization logic ever reach a Runtime Pod (import-linter holds
this line).
"""
