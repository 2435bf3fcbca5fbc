"""The rehearsal cluster (docs/rehearsal.md): OpenPAI v1.2.0's real control plane on one machine, real Kubernetes
1.20.2, emulated kubelets and GPUs.

`settings` (folders, ports), `programs` (what must be there, and the checks), `configs` (what each program is
given, pure), `kubelet` (the emulated kubelets' decisions, pure) and `kubelet_loop` (their process), `supervisor`
(start, record, stop), `probes` (readiness), `stack` (up, switch, status, down), `build` (Kubernetes from Debian).
It sits beside the backends: to `hivedlab run --cluster pai` it is a real cluster.
"""
