"""Schedulers other than HiveD, as pure models (standard library only): Kubernetes' default scheduler of the
1.14/1.15 line (`default`) and kube-batch v0.4 (`kube_batch`). What each follows and where it simplifies:
docs/other-schedulers.md."""
