"""`kubectl gpu doctor`: check a cluster for double counting and migration problems.

Exit codes (kubectl_gpu/cli/exits.py): 0 no problems, 1 problems found (each says how to fix it),
4/5 the cluster could not be read at all.  Information-only findings never fail."""

from __future__ import annotations

import dataclasses
import sys
from typing import Any

import click

from kubectl_gpu.cli import exits
from kubectl_gpu.cli.console import progress
from kubectl_gpu.cli.options import dra_node_label_option, emit, parse_dra_labels
from kubectl_gpu.k8s.options import ClusterOptions, cluster_options


EPILOG = exits.epilog("""\b
Examples:
  kubectl gpu doctor                        # the whole cluster; exit 1 on a finding
  kubectl gpu doctor -n serving -o wide     # one namespace's objects, long values whole
  kubectl gpu doctor -l pool=h100 -o json   # only these nodes, for scripts
""")


@click.command("doctor", epilog=EPILOG)
@cluster_options
@dra_node_label_option
@click.option("--extra-legacy-resource", "extra_legacy_resources", multiple=True, metavar="NAME",
              help="A device-plugin GPU resource under a name of its own (the webhook's extraLegacyResources, "
                   "e.g. nvidia.com/a100): advertised by a DRA node, it is double counting.  Repeatable.")
def command(dra_node_labels: tuple[str, ...], extra_legacy_resources: tuple[str, ...], **values: Any) -> None:
    """Check the cluster for double counting and migration problems.

    \b
    - GPUs offered by both a device plugin and a DRA driver, NVIDIA's or HAMi's (double counting)
    - DeviceClass extendedResourceName overlapping device-plugin resources (KEP-5004)
    - the kubectl-gpu webhook: configured, with a Service that has ready endpoints
    - claims/templates naming missing DeviceClasses or attributes no ResourceSlice publishes,
      or that no node could allocate even with every device free (Kubernetes' allocator)
    - templates and claims created by kubectl-gpu that nothing uses any more
    - which resource.k8s.io versions the cluster serves
    - GPUs their DRA driver tainted as unhealthy (KEP-5055 device taints)
    - ResourceQuotas that cap legacy GPUs but not the DRA devices the namespace's claims hold
    - every extended resource a DRA node advertises (a renamed device-plugin GPU hides there)

    Namespaced objects are read from all namespaces unless -n is given; -l narrows the nodes.
    """
    from kubectl_gpu.inspect import tables
    from kubectl_gpu.inspect.doctor import run_doctor
    from kubectl_gpu.inspect.fetch import fetch_doctor_inputs
    from kubectl_gpu.k8s import ApiError, KubeconfigError

    options = ClusterOptions(**values)
    labels = parse_dra_labels(dra_node_labels)
    try:
        connection = options.connect()
        namespace = None if options.all_namespaces else options.namespace
        with progress("reading the cluster's nodes, pods, workloads, webhooks and DRA objects..."):
            inputs = fetch_doctor_inputs(connection.api, namespace, labels, node_selector=options.selector)
        inputs = dataclasses.replace(inputs, extra_legacy_resources=frozenset(extra_legacy_resources))
    except (KubeconfigError, ApiError) as exc:
        exits.fail(exc)
    report = run_doctor(inputs)
    emit(options, report.to_dict(), lambda: tables.doctor(report, wide=options.output == "wide",
                                                                 headers=not options.no_headers))
    sys.exit(exits.OK if report.healthy else exits.FINDINGS)
