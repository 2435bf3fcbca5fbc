"""The lab's experiments: plans (labs/experiments/*.yaml), the runner, and the numbered scripts."""
