{{/* The release's full name, at most 63 characters (a DNS label). */}}
{{- define "kruntimes.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "kruntimes.webhookService" -}}
{{- printf "%s-webhook" (include "kruntimes.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "kruntimes.tlsSecret" -}}
{{- printf "%s-webhook-tls" (include "kruntimes.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "kruntimes.serviceAccountName" -}}
{{- default (include "kruntimes.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{- define "kruntimes.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "kruntimes.labels" -}}
{{ include "kruntimes.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "kruntimes.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* The host names the web Services are reached by (ALLOWED_HOSTS and the certificate). */}}
{{- define "kruntimes.serviceHosts" -}}
{{- $ns := .Release.Namespace -}}
{{- $hosts := list -}}
{{- range $name := list (include "kruntimes.fullname" .) (include "kruntimes.webhookService" .) -}}
{{- $hosts = concat $hosts (list $name (printf "%s.%s" $name $ns) (printf "%s.%s.svc" $name $ns) (printf "%s.%s.svc.cluster.local" $name $ns)) -}}
{{- end -}}
{{- join "," $hosts -}}
{{- end -}}

{{/* Env of every portal container: secrets by secretKeyRef only, never a value. */}}
{{- define "kruntimes.env" -}}
- name: KRUNTIMES_CLUSTER
  value: kubernetes
- name: DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ .Values.secrets.database.name }}
      key: {{ .Values.secrets.database.key }}
- name: CELERY_BROKER_URL
  valueFrom:
    secretKeyRef:
      name: {{ .Values.secrets.redis.name }}
      key: {{ .Values.secrets.redis.key }}
- name: SECRET_KEY
  valueFrom:
    secretKeyRef:
      name: {{ .Values.secrets.secretKey.name }}
      key: {{ .Values.secrets.secretKey.key }}
{{- if .Values.secrets.encryptionKeys.name }}
- name: KRUNTIMES_SECRET_ENCRYPTION_KEYS
  valueFrom:
    secretKeyRef:
      name: {{ .Values.secrets.encryptionKeys.name }}
      key: {{ .Values.secrets.encryptionKeys.key }}
{{- end }}
- name: ALLOWED_HOSTS
  value: {{ join "," (concat (list (include "kruntimes.serviceHosts" .)) .Values.allowedHosts) | quote }}
{{- with .Values.csrfTrustedOrigins }}
- name: CSRF_TRUSTED_ORIGINS
  value: {{ join "," . | quote }}
{{- end }}
{{- with .Values.authorizer }}
- name: KRUNTIMES_AUTHORIZER
  value: {{ . | quote }}
{{- end }}
{{- with .Values.tokenAudiences }}
- name: KRUNTIMES_TOKEN_AUDIENCES
  value: {{ join "," . | quote }}
{{- end }}
{{- with .Values.workflowControllerUsername }}
- name: KRUNTIMES_WORKFLOW_CONTROLLER_USERNAME
  value: {{ . | quote }}
{{- end }}
{{- if .Values.metrics.anonymous }}
- name: KRUNTIMES_METRICS_ANONYMOUS
  value: "true"
{{- end }}
- name: LOG_LEVEL
  value: {{ .Values.logLevel | quote }}
- name: POD_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* What every portal container has besides its command, env and resources. */}}
{{- define "kruntimes.container" -}}
image: {{ include "kruntimes.image" . }}
imagePullPolicy: {{ .Values.image.pullPolicy }}
securityContext:
  {{- toYaml .Values.securityContext | nindent 2 }}
{{- end -}}

{{/* Pod fields every portal pod shares. */}}
{{- define "kruntimes.podSpec" -}}
serviceAccountName: {{ include "kruntimes.serviceAccountName" . }}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}
