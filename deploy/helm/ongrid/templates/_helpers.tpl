{{/* Names, labels and the pieces every Ongrid pod shares. */}}

{{- define "ongrid.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "ongrid.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* Selector labels of one component: (dict "root" $ "component" "web") */}}
{{- define "ongrid.selectorLabels" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "ongrid.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "ongrid.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- .Values.serviceAccount.name | default (include "ongrid.fullname" .) -}}
{{- else -}}
{{- .Values.serviceAccount.name | default "default" -}}
{{- end -}}
{{- end -}}

{{/* ALLOWED_HOSTS: the named hosts, then the ingress hosts; localhost when there is none. */}}
{{- define "ongrid.allowedHosts" -}}
{{- $hosts := list -}}
{{- range .Values.allowedHosts }}{{ $hosts = append $hosts . }}{{ end -}}
{{- if .Values.ingress.enabled -}}
{{- range .Values.ingress.hosts }}{{ $hosts = append $hosts .host }}{{ end -}}
{{- end -}}
{{- if not $hosts }}{{ $hosts = list "localhost" }}{{ end -}}
{{- $hosts | uniq | join "," -}}
{{- end -}}

{{/* The Host header of the kubelet's probes: Django answers 400 to one it does not allow. */}}
{{- define "ongrid.probeHost" -}}
{{- include "ongrid.allowedHosts" . | splitList "," | first | trimPrefix "." -}}
{{- end -}}

{{- define "ongrid.healthz" -}}
path: /healthz
port: http
httpHeaders:
  - name: Host
    value: {{ include "ongrid.probeHost" . | quote }}
{{- end -}}

{{- define "ongrid.publicUrl" -}}
{{- if .Values.publicUrl -}}
{{- .Values.publicUrl -}}
{{- else if and .Values.ingress.enabled .Values.ingress.hosts -}}
{{- printf "https://%s" (first .Values.ingress.hosts).host -}}
{{- end -}}
{{- end -}}

{{- define "ongrid.databaseUrl" -}}
{{- if .Values.postgresql.bundled -}}
{{- $password := required "postgresql.auth.password is required with the bundled PostgreSQL" .Values.postgresql.auth.password -}}
{{- printf "postgres://ongrid:%s@%s-postgresql:5432/ongrid" (urlquery $password) (include "ongrid.fullname" .) -}}
{{- else -}}
{{- required "postgresql.externalUrl is required when postgresql.bundled is false" .Values.postgresql.externalUrl -}}
{{- end -}}
{{- end -}}

{{- define "ongrid.redisUrl" -}}
{{- if .Values.redis.bundled -}}
{{- printf "redis://%s-redis:6379/0" (include "ongrid.fullname" .) -}}
{{- else -}}
{{- required "redis.externalUrl is required when redis.bundled is false" .Values.redis.externalUrl -}}
{{- end -}}
{{- end -}}

{{/* The settings (ConfigMap data): never a secret. */}}
{{- define "ongrid.settings" -}}
ALLOWED_HOSTS: {{ include "ongrid.allowedHosts" . | quote }}
CSRF_TRUSTED_ORIGINS: {{ join "," .Values.csrfTrustedOrigins | quote }}
ONGRID_HTTPS: {{ ternary "1" "0" .Values.https | quote }}
ONGRID_TLS_PROXY: {{ ternary "1" "0" .Values.tlsProxy | quote }}
{{- with include "ongrid.publicUrl" . }}
ONGRID_PUBLIC_URL: {{ . | quote }}
{{- end }}
ONGRID_PORT: {{ .Values.web.port | quote }}
ONGRID_AGENTS_RELOAD: "poll"
{{- if .Values.kubernetesReader.enabled }}
ONGRID_KUBERNETES_IN_CLUSTER: {{ required "kubernetesReader.organization is required with kubernetesReader.enabled" .Values.kubernetesReader.organization | quote }}
{{- end }}
{{- range $key, $value := .Values.config }}
{{ $key }}: {{ $value | toString | quote }}
{{- end }}
{{- end -}}

{{/* The secrets (Secret stringData) the chart holds itself. */}}
{{- define "ongrid.secrets" -}}
DATABASE_URL: {{ include "ongrid.databaseUrl" . | quote }}
REDIS_URL: {{ include "ongrid.redisUrl" . | quote }}
{{- if not .Values.secrets.existingSecret }}
SECRET_KEY: {{ required "secrets.SECRET_KEY (or secrets.existingSecret) is required" .Values.secrets.SECRET_KEY | quote }}
{{- end }}
{{- range $key := list "ONGRID_ENCRYPTION_KEYS" "OPENAI_API_KEY" "ONGRID_METRICS_TOKEN" }}
{{- with index $.Values.secrets $key }}
{{ $key }}: {{ . | quote }}
{{- end }}
{{- end }}
{{- end -}}

{{/* envFrom of every Ongrid container; a later source wins, so existingSecret overrides. */}}
{{- define "ongrid.envFrom" -}}
- configMapRef:
    name: {{ include "ongrid.fullname" . }}
- secretRef:
    name: {{ include "ongrid.fullname" . }}
{{- with .Values.secrets.existingSecret }}
- secretRef:
    name: {{ . }}
{{- end }}
{{- end -}}

{{/* Rolls the pods when a setting or a secret changes. */}}
{{- define "ongrid.checksum" -}}
checksum/settings: {{ printf "%s%s" (include "ongrid.settings" .) (include "ongrid.secrets" .) | sha256sum }}
{{- end -}}

{{/* Writable places under a read-only root: the data folder and /tmp. */}}
{{- define "ongrid.volumes" -}}
- name: data
  emptyDir: {}
- name: tmp
  emptyDir: {}
{{- end -}}

{{- define "ongrid.volumeMounts" -}}
- name: data
  mountPath: /var/lib/ongrid
- name: tmp
  mountPath: /tmp
{{- end -}}

{{/* Holds a pod until the migration Job has applied every migration of this image. */}}
{{- define "ongrid.waitForMigrations" -}}
- name: wait-for-migrations
  image: {{ include "ongrid.image" . }}
  imagePullPolicy: {{ .Values.image.pullPolicy }}
  args: ["wait-for-migrations"]
  envFrom:
    {{- include "ongrid.envFrom" . | nindent 4 }}
  securityContext:
    {{- toYaml .Values.securityContext | nindent 4 }}
  resources:
    requests: {cpu: 50m, memory: 256Mi}
    limits: {memory: 512Mi}
  volumeMounts:
    {{- include "ongrid.volumeMounts" . | nindent 4 }}
{{- end -}}

{{/* The pod-level fields every Ongrid Deployment shares. */}}
{{- define "ongrid.podSpec" -}}
serviceAccountName: {{ include "ongrid.serviceAccountName" . }}
automountServiceAccountToken: {{ .Values.kubernetesReader.enabled }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
volumes:
  {{- include "ongrid.volumes" . | nindent 2 }}
{{- end -}}
