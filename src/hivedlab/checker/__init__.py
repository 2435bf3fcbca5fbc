"""Timelines, rules, verdicts, reports, grading and validation: what the checker does. Never imports a backend."""

# The repository's top-level `checker` is a link to this folder, for browsing only; with the repository root on
# sys.path it would load this code a second time as `checker`, whose classes are not hivedlab.checker's.
if __name__ != "hivedlab.checker":
    raise ImportError(f"import hivedlab.checker, not {__name__}: the top-level checker/ folder is a link for browsing")
