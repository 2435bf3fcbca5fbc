"""The experiment plans: the runner runs them, the judge judges by their rules, validate checks them."""
