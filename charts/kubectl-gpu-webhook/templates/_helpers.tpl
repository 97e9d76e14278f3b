{{/* Names ---------------------------------------------------------------------------------- */}}

{{- define "kubectl-gpu-webhook.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "kubectl-gpu-webhook.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "kubectl-gpu-webhook.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- /* With serviceAccount.create false a name is required: binding the ClusterRole to the
namespace's "default" account would hand its permissions to every pod that runs as it. */}}
{{- define "kubectl-gpu-webhook.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "kubectl-gpu-webhook.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false: the chart never binds its ClusterRole to the namespace's default ServiceAccount (every pod running as it would get the webhook's permissions)" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- /* 52 characters at most: the CronJob controller appends an 11-character suffix to name its
Jobs, and a CronJob name longer than 52 is refused by the API server. */}}
{{- define "kubectl-gpu-webhook.cleanupName" -}}
{{- printf "%s-cleanup" (include "kubectl-gpu-webhook.fullname" . | trunc 44 | trimSuffix "-") }}
{{- end }}

{{- define "kubectl-gpu-webhook.tlsSecretName" -}}
{{- if eq .Values.certificates.mode "existing-secret" }}
{{- required "certificates.existingSecret.name is required with certificates.mode existing-secret" .Values.certificates.existingSecret.name }}
{{- else }}
{{- printf "%s-tls" (include "kubectl-gpu-webhook.fullname" .) }}
{{- end }}
{{- end }}

{{- define "kubectl-gpu-webhook.serviceDNSNames" -}}
{{- $svc := include "kubectl-gpu-webhook.fullname" . }}
{{- $ns := .Release.Namespace }}
{{- list $svc (printf "%s.%s" $svc $ns) (printf "%s.%s.svc" $svc $ns) (printf "%s.%s.svc.cluster.local" $svc $ns) | toJson }}
{{- end }}

{{/* Labels --------------------------------------------------------------------------------- */}}

{{- /* The webhook's pods, and only them (not the clean-up job's): Service, PDB, spread, policy. */}}
{{- define "kubectl-gpu-webhook.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kubectl-gpu-webhook.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: admission-webhook
{{- end }}

{{- define "kubectl-gpu-webhook.commonLabels" -}}
helm.sh/chart: {{ include "kubectl-gpu-webhook.chart" . }}
app.kubernetes.io/name: {{ include "kubectl-gpu-webhook.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: kubectl-gpu
{{- end }}

{{- define "kubectl-gpu-webhook.labels" -}}
{{ include "kubectl-gpu-webhook.commonLabels" . }}
app.kubernetes.io/component: admission-webhook
{{- end }}

{{- define "kubectl-gpu-webhook.cleanupLabels" -}}
{{ include "kubectl-gpu-webhook.commonLabels" . }}
app.kubernetes.io/component: cleanup
{{- end }}

{{- define "kubectl-gpu-webhook.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* Security contexts: the restricted Pod Security Standard, and a read-only root. ----------- */}}

{{- define "kubectl-gpu-webhook.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
fsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{- define "kubectl-gpu-webhook.containerSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
privileged: false
capabilities:
  drop: ["ALL"]
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{/* Webhook behaviour ---------------------------------------------------------------------- */}}

{{- /* Fail unless set; in audit mode nothing is changed, so an outage need not block anything. */}}
{{- define "kubectl-gpu-webhook.failurePolicy" -}}
{{- if .Values.webhook.failurePolicy }}
{{- .Values.webhook.failurePolicy }}
{{- else if .Values.config.audit }}
{{- "Ignore" }}
{{- else }}
{{- "Fail" }}
{{- end }}
{{- end }}

{{- define "kubectl-gpu-webhook.excludedNamespaces" -}}
{{- concat (list "kube-system" .Release.Namespace) .Values.config.excludedNamespaces | uniq | toJson }}
{{- end }}

{{- define "kubectl-gpu-webhook.namespaceSelector" -}}
matchExpressions:
  - key: kubernetes.io/metadata.name
    operator: NotIn
    values: {{ include "kubectl-gpu-webhook.excludedNamespaces" . }}
{{- if .Values.optOut.bypassWebhook }}
  - key: {{ .Values.config.optOutLabel }}
    operator: NotIn
    values: ["true"]
{{- end }}
{{- with .Values.webhook.extraNamespaceSelectorExpressions }}
{{ toYaml . | indent 2 }}
{{- end }}
{{- end }}

{{- define "kubectl-gpu-webhook.objectSelector" -}}
{{- if .Values.optOut.bypassWebhook -}}
matchExpressions:
  - key: {{ .Values.config.optOutLabel }}
    operator: NotIn
    values: ["true"]
{{- else -}}
{}
{{- end }}
{{- end }}

{{/* matchConditions (CEL) ------------------------------------------------------------------

Only objects that carry a legacy GPU resource (a non-zero quantity in the limits, or in the
requests when there is no limit, of a container or initContainer) or a DRA claim reach the
webhook, so that a webhook outage can never block ordinary pods.  This is the test the
translation core applies (kubectl_gpu.core.families.has_legacy_gpu_request), and
tests/test_chart_match_conditions.py holds the two together.  Quantities reach CEL as strings or
ints: a quantity is non-zero exactly when its mantissa holds a non-zero digit ("1", "0.5", "500m"
yes; "0", "0.0", "0e3" no).  Every field access is guarded with has(): an error in a match
condition would, with failurePolicy Fail, reject the request.

The legacy resource names, by family (docs/design.md):
  nvidia-gpu    nvidia.com/gpu, nvidia.com/gpu.shared (time-slicing rename), alpha.kubernetes.io/nvidia-gpu
  vcuda         tencent.com/vcuda-core, tencent.com/vcuda-memory (and the nvidia.com/ spelling)
  mig           nvidia.com/mig-<profile>
  hami          nvidia.com/gpumem, nvidia.com/gpumem-percentage, nvidia.com/gpucores
  aliyun        aliyun.com/gpu-mem, aliyun.com/gpu-count, aliyun.com/gpu-core.percentage
  vgpu-manager  nvidia.com/vgpu-number, nvidia.com/vgpu-cores, nvidia.com/vgpu-memory
  volcano       volcano.sh/vgpu-number, volcano.sh/vgpu-cores, volcano.sh/vgpu-memory
  volcano-gpushare  volcano.sh/gpu-memory, volcano.sh/gpu-number
  koordinator   koordinator.sh/gpu, koordinator.sh/gpu.shared, koordinator.sh/gpu-core,
                koordinator.sh/gpu-memory, koordinator.sh/gpu-memory-ratio
  tpu           google.com/tpu
*/}}

{{- /* The GPU names, one alternation: the two regexes below must never drift apart. */}}
{{- define "kubectl-gpu-webhook.legacyGpuResourceNames" -}}
nvidia[.]com/(gpu|gpu[.]shared|vcuda-core|vcuda-memory|mig-.+|gpumem|gpumem-percentage|gpucores|vgpu-number|vgpu-cores|vgpu-memory)|alpha[.]kubernetes[.]io/nvidia-gpu|tencent[.]com/vcuda-(core|memory)|aliyun[.]com/(gpu-mem|gpu-count|gpu-core[.]percentage)|volcano[.]sh/vgpu-(number|cores|memory)|volcano[.]sh/gpu-(memory|number)|koordinator[.]sh/(gpu|gpu[.]shared|gpu-core|gpu-memory|gpu-memory-ratio)
{{- /* config.extraLegacyResources: names a device plugin advertises under a name of its own.  The
schema lets a name hold no regex metacharacter but "."; [.] needs no backslash in a CEL string. */}}
{{- range .Values.config.extraLegacyResources }}|{{ replace "." "[.]" . }}{{ end }}
{{- end }}

{{- define "kubectl-gpu-webhook.legacyResourceRegex" -}}
^({{ include "kubectl-gpu-webhook.legacyGpuResourceNames" . }}|google[.]com/tpu)$
{{- end }}

{{- /* Without TPUs: the node-status guard is about GPUs counted twice. */}}
{{- define "kubectl-gpu-webhook.legacyGpuResourceRegex" -}}
^({{ include "kubectl-gpu-webhook.legacyGpuResourceNames" . }})$
{{- end }}

{{- define "kubectl-gpu-webhook.nonZeroQuantityRegex" -}}
^[+]?[0-9.]*[1-9]
{{- end }}

{{- /* true when container c holds a non-zero legacy GPU resource; the limit wins over the request */}}
{{- define "kubectl-gpu-webhook.cel.container" -}}
{{- $re := include "kubectl-gpu-webhook.legacyResourceRegex" . -}}
{{- $nz := include "kubectl-gpu-webhook.nonZeroQuantityRegex" . -}}
{{- printf "has(c.resources) && ((has(c.resources.limits) && c.resources.limits.exists(r, r.matches('%s') && string(c.resources.limits[r]).matches('%s'))) || (has(c.resources.requests) && c.resources.requests.exists(r, r.matches('%s') && !(has(c.resources.limits) && r in c.resources.limits) && string(c.resources.requests[r]).matches('%s'))))" $re $nz $re $nz -}}
{{- end }}

{{- /* true when a resource map at path .m (a node's capacity or allocatable) holds a non-zero legacy GPU resource */}}
{{- define "kubectl-gpu-webhook.cel.legacyGpuIn" -}}
{{- $re := include "kubectl-gpu-webhook.legacyGpuResourceRegex" .root -}}
{{- $nz := include "kubectl-gpu-webhook.nonZeroQuantityRegex" .root -}}
{{- printf "(has(%s) && %s.exists(r, r.matches('%s') && string(%s[r]).matches('%s')))" .m .m $re .m $nz -}}
{{- end }}

{{- /* true when the pod spec at path .spec asks for a legacy GPU.  A pod whose only accelerator is
a DRA claim never reaches this webhook: every check here is about a legacy request (the double
counting ones too), and an outage of this webhook must not block other drivers' DRA pods. */}}
{{- define "kubectl-gpu-webhook.cel.podSpec" -}}
{{- $s := .spec -}}
{{- $container := include "kubectl-gpu-webhook.cel.container" .root -}}
(has({{ $s }}.containers) && {{ $s }}.containers.exists(c, {{ $container }}))
  || (has({{ $s }}.initContainers) && {{ $s }}.initContainers.exists(c, {{ $container }}))
{{- end }}

{{- /* A workload a controller owns (a Deployment's ReplicaSet, a CronJob's Job) is left to its
owner: the owner's template is rewritten, and the controller compares the two (kubernetes#57167).
ownerReferences as metav1.NewControllerRef sets them: controller: true. */}}
{{- define "kubectl-gpu-webhook.cel.notControllerOwned" -}}
!(has(object.metadata) && has(object.metadata.ownerReferences) && object.metadata.ownerReferences.exists(r, has(r.controller) && r.controller))
{{- end }}

{{- /* An UPDATE matters only when it changes the pod template (.t: its path under spec); a label,
scale or finalizer change must not start a rollout.  oldObject is null on CREATE. */}}
{{- define "kubectl-gpu-webhook.cel.templateChangedOnUpdate" -}}
request.operation != 'UPDATE' || oldObject == null || !has(oldObject.spec) || !has(oldObject.spec.{{ .t }}) || !has(object.spec.{{ .t }}) || object.spec.{{ .t }} != oldObject.spec.{{ .t }}
{{- end }}

{{- define "kubectl-gpu-webhook.cel.pod" -}}
has(object.spec) && (
  {{ include "kubectl-gpu-webhook.cel.podSpec" (dict "root" . "spec" "object.spec") | indent 2 | trim }}
)
{{- end }}

{{- /* Deployment, StatefulSet, DaemonSet, ReplicaSet, Job: spec.template.spec */}}
{{- define "kubectl-gpu-webhook.cel.workload" -}}
has(object.spec) && has(object.spec.template) && has(object.spec.template.spec) && (
  {{ include "kubectl-gpu-webhook.cel.podSpec" (dict "root" . "spec" "object.spec.template.spec") | indent 2 | trim }}
)
{{- end }}

{{- define "kubectl-gpu-webhook.cel.cronjob" -}}
has(object.spec) && has(object.spec.jobTemplate) && has(object.spec.jobTemplate.spec)
  && has(object.spec.jobTemplate.spec.template) && has(object.spec.jobTemplate.spec.template.spec) && (
  {{ include "kubectl-gpu-webhook.cel.podSpec" (dict "root" . "spec" "object.spec.jobTemplate.spec.template.spec") | indent 2 | trim }}
)
{{- end }}

{{- /* A claim the resourceclaim controller made from a template: the template was validated. */}}
{{- define "kubectl-gpu-webhook.cel.notGeneratedClaim" -}}
!(has(object.metadata) && has(object.metadata.annotations) && 'resource.kubernetes.io/pod-claim-name' in object.metadata.annotations)
{{- end }}

{{- /* A node that runs the DRA driver (any draNodeSelector) and reports a legacy GPU resource. */}}
{{- define "kubectl-gpu-webhook.cel.draNodeWithLegacyCapacity" -}}
{{- $selectors := list -}}
{{- range .Values.config.draNodeSelectors -}}
{{- if and (hasKey . "value") (not (kindIs "invalid" .value)) -}}
{{- $selectors = append $selectors (printf "('%s' in object.metadata.labels && object.metadata.labels['%s'] == '%s')" .key .key (toString .value)) -}}
{{- else -}}
{{- $selectors = append $selectors (printf "'%s' in object.metadata.labels" .key) -}}
{{- end -}}
{{- end -}}
has(object.metadata) && has(object.metadata.labels) && ({{ join " || " $selectors }})
  && has(object.status) && (
  {{ include "kubectl-gpu-webhook.cel.legacyGpuIn" (dict "root" . "m" "object.status.capacity") }}
  || {{ include "kubectl-gpu-webhook.cel.legacyGpuIn" (dict "root" . "m" "object.status.allocatable") }}
)
{{- end }}

{{/* Shared parts of every webhook entry ------------------------------------------------------ */}}

{{- define "kubectl-gpu-webhook.clientConfig" -}}
clientConfig:
  service:
    name: {{ .fullname }}
    namespace: {{ .ns }}
    path: {{ .path }}
    port: {{ .port }}
  {{- if .selfSigned }}
  caBundle: {{ .caBundle }}
  {{- end }}
{{- end }}

{{- define "kubectl-gpu-webhook.webhookCommon" -}}
failurePolicy: {{ .failurePolicy }}
matchPolicy: Equivalent
sideEffects: NoneOnDryRun
timeoutSeconds: {{ .timeout }}
admissionReviewVersions: ["v1"]
{{- end }}
