"""Pure models behind `kubectl gpu describe` and `doctor`: lists of API objects in, reports out.

No I/O happens here except in `fetch`, which reads what the models need through kubectl_gpu.k8s
(and is the entry point `explain POD` uses: `explain_pod_live`).
"""
