package main

import (
	"net/http"
	"strings"

	"github.com/spf13/cobra"
)

// tokenEnv is the environment variable the commands that read a node's
// reports (status, config effective --url) take an API token from when
// --token is not given.
const tokenEnv = "OTOPCUA_TOKEN"

// bindToken adds --token to cmd.
func bindToken(cmd *cobra.Command, dst *string) {
	cmd.Flags().StringVar(dst, "token", "", "API token of a Viewer or above, sent as Authorization: Bearer (default $"+tokenEnv+"; otopcua user token NAME makes one)")
}

// apiToken is flag when set, else $OTOPCUA_TOKEN from the command's
// environment, else "" (no credentials: a node with Http:AnonymousRead).
func (c *cli) apiToken(flag string) string {
	if flag != "" {
		return flag
	}
	for i := len(c.environ) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(c.environ[i], tokenEnv+"="); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// setBearer sends token as Authorization: Bearer; nothing when "".
func setBearer(req *http.Request, token string) {
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
}

// refusalHint says how to authenticate when a node answered 401.
func refusalHint(status int, token string) string {
	if status != http.StatusUnauthorized {
		return ""
	}
	if token == "" {
		return " (the node's reports need a Viewer's API token: pass --token or set " + tokenEnv + "; otopcua user token NAME makes one)"
	}
	return " (the token was refused: otopcua user token NAME issues a new one and replaces the old)"
}
