"""Evidence, watching, timelines, verdicts, reports, grading and validation. Never imports a backend."""
