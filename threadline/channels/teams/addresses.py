"""Microsoft's own addresses for a Teams bot, in one place that imports nothing: the settings
name them as defaults (reading settings imports no SDK) and the channel falls back on them."""

DEFAULT_LOGIN_URL = "https://login.microsoftonline.com"
DEFAULT_OPENID_METADATA_URL = "https://login.botframework.com/v1/.well-known/openidconfiguration"
DEFAULT_SERVICE_URL = "https://smba.trafficmanager.net/teams"
