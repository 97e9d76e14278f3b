"""How long one API request may take (kubectl's --request-timeout), in a module with no
imports so the CLI's option parsing can read it without loading the client."""

# `kubectl --request-timeout` defaults to 0 (wait forever); a GPU report that hangs for minutes
# on a dead control plane helps nobody, and a page of 1,000 pods comes back in well under a
# second from a healthy API server, so each request gets 30 s unless the user says otherwise.
REQUEST_TIMEOUT_SECONDS = 30.0
