{{/* Names and labels shared by every template. */}}

{{- define "hitl-bridge.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "hitl-bridge.fullname" -}}
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

{{- define "hitl-bridge.selectorLabels" -}}
app.kubernetes.io/name: {{ include "hitl-bridge.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "hitl-bridge.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "hitl-bridge.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* The Secret the pods load with envFrom: the user's, or the chart's own. */}}
{{- define "hitl-bridge.secretName" -}}
{{- default (include "hitl-bridge.fullname" .) .Values.existingSecret }}
{{- end }}

{{/* Secret values by the environment variable each one sets. */}}
{{- define "hitl-bridge.secretEnv" -}}
HITL_BRIDGE__STORE__URL: {{ .Values.secrets.storeUrl | quote }}
HITL_BRIDGE__TELEGRAM__TOKEN: {{ .Values.secrets.telegramToken | quote }}
HITL_BRIDGE__TELEGRAM__WEBHOOK_SECRET: {{ .Values.secrets.telegramWebhookSecret | quote }}
HITL_BRIDGE__DISCORD__TOKEN: {{ .Values.secrets.discordToken | quote }}
HITL_BRIDGE__SLACK__BOT_TOKEN: {{ .Values.secrets.slackBotToken | quote }}
HITL_BRIDGE__SLACK__APP_TOKEN: {{ .Values.secrets.slackAppToken | quote }}
HITL_BRIDGE__SLACK__SIGNING_SECRET: {{ .Values.secrets.slackSigningSecret | quote }}
HITL_BRIDGE__TEAMS__APP_PASSWORD: {{ .Values.secrets.teamsAppPassword | quote }}
HITL_BRIDGE__MATTERMOST__BOT_TOKEN: {{ .Values.secrets.mattermostBotToken | quote }}
HITL_BRIDGE__MATTERMOST__SLASH_TOKEN: {{ .Values.secrets.mattermostSlashToken | quote }}
HITL_BRIDGE__MATRIX__ACCESS_TOKEN: {{ .Values.secrets.matrixAccessToken | quote }}
HITL_BRIDGE__MATRIX__PASSWORD: {{ .Values.secrets.matrixPassword | quote }}
HITL_BRIDGE__MATRIX__STORE_PASSPHRASE: {{ .Values.secrets.matrixStorePassphrase | quote }}
HITL_BRIDGE__TOKENS__SECRET: {{ .Values.secrets.tokensSecret | quote }}
HITL_BRIDGE__HTTP__API_TOKENS: {{ .Values.secrets.apiTokens | quote }}
HITL_BRIDGE__BACKEND__TOKEN: {{ .Values.secrets.backendToken | quote }}
{{- end }}

{{/*
Several replicas only work on one PostgreSQL database (leases, first decision wins).
Stops the render when replicaCount > 1 would run on SQLite, with Telegram polling, or
with Matrix (each replica must be a Matrix device of its own, with its own kept
matrix.store_path and access token: docs/matrix.md; the pods of a Deployment share one
Secret and keep no volume each).
*/}}
{{- define "hitl-bridge.checkStore" -}}
{{- if gt (int .Values.replicaCount) 1 }}
{{- $url := .Values.secrets.storeUrl | default (get .Values.env "HITL_BRIDGE__STORE__URL") | default "" }}
{{- if and (not .Values.existingSecret) (not (or (hasPrefix "postgres://" $url) (hasPrefix "postgresql://" $url))) }}
{{- fail "replicaCount > 1 needs a PostgreSQL store: set secrets.storeUrl to postgres://… (or existingSecret with HITL_BRIDGE__STORE__URL)" }}
{{- end }}
{{- if .Values.persistence.enabled }}
{{- fail "replicaCount > 1 with persistence.enabled: the SQLite volume is for one replica; use PostgreSQL and turn persistence off" }}
{{- end }}
{{- $telegram := get .Values.env "HITL_BRIDGE__TELEGRAM__ENABLED" | toString }}
{{- $mode := get .Values.env "HITL_BRIDGE__TELEGRAM__MODE" | toString }}
{{- if and (eq $telegram "true") (ne $mode "webhook") }}
{{- fail "replicaCount > 1 with Telegram polling: Telegram allows one poller per bot token; set env.HITL_BRIDGE__TELEGRAM__MODE=webhook and telegramWebhook.enabled" }}
{{- end }}
{{- $matrix := get .Values.env "HITL_BRIDGE__MATRIX__ENABLED" | toString | lower }}
{{- if eq $matrix "true" }}
{{- fail "replicaCount > 1 with Matrix: each replica must be a Matrix device of its own (its own kept matrix.store_path and access token), which one Deployment cannot give its pods; run Matrix on one replica with persistence.enabled" }}
{{- end }}
{{- end }}
{{- end }}
