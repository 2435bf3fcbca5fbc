"""Kubeflow's TFJob and the gang schedulers' PodGroup as manifests (docs/kubeflow-on-kubernetes.md): the two forms
the lab ships (`manifests.FORMS`), reading a manifest file with positions, renaming a run's jobs, and the labels
the training operator puts on a TFJob's pods.

Nothing is imported here; import the module you need.
"""
