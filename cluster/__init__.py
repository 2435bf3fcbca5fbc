"""What experiments run on: HiveD's model, OpenPAI's model, the simulated and the real backend."""
