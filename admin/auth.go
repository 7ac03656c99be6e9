package admin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Role is an admin user's role. Only Administrator may trigger a failover
// or read the audit log; every role may read the pages. On the OPC UA
// endpoint a role's rights come from OpcUa:Authorization (by default
// Administrator and Operator read, write, acknowledge and call; the others
// only read).
type Role string

// The roles, most privileged first.
const (
	RoleAdministrator Role = "Administrator"
	RoleConfigEditor  Role = "ConfigEditor"
	RoleOperator      Role = "Operator"
	RoleDesigner      Role = "Designer"
	RoleViewer        Role = "Viewer"
)

// Roles lists every role, most privileged first.
var Roles = []Role{RoleAdministrator, RoleConfigEditor, RoleOperator, RoleDesigner, RoleViewer}

// ParseRole accepts a role name exactly as Roles spells it.
func ParseRole(s string) (Role, error) {
	for _, r := range Roles {
		if string(r) == s {
			return r, nil
		}
	}
	names := make([]string, len(Roles))
	for i, r := range Roles {
		names[i] = string(r)
	}
	return "", fmt.Errorf("unknown role %q: accepted are %s", s, strings.Join(names, ", "))
}

// CanFailover: only an Administrator may trigger a manual failover
// (deliberately not ConfigEditor: it restarts a production node).
func (r Role) CanFailover() bool { return r == RoleAdministrator }

// CanRead: every role, Viewer and above, reads the pages, the JSON API and
// the host's read reports (docs/security.md); a role this build does not
// know reads nothing.
func (r Role) CanRead() bool { return slices.Contains(Roles, r) }

// CanReadAudit: only an Administrator reads /audit.
func (r Role) CanReadAudit() bool { return r == RoleAdministrator }

// User is an authenticated admin user.
type User struct {
	Name string `json:"name"`
	Role Role   `json:"role"`
}

// Session is a logged-in browser session. ID goes in the session cookie;
// CSRFToken must accompany every state-changing request made with it.
type Session struct {
	ID        string
	User      User
	CSRFToken string
	Expires   time.Time
}

// Errors of an Authenticator.
var (
	// ErrBadCredentials: unknown user or wrong password (never says which).
	ErrBadCredentials = errors.New("admin: wrong user name or password")
	// ErrBusy: too many logins are being checked at once; try again.
	ErrBusy = errors.New("admin: too many logins at once; try again shortly")
	// ErrNoToken: the bearer token is unknown or was replaced.
	ErrNoToken = errors.New("admin: unknown bearer token")
)

// ThrottledError: too many failed logins of this user name from this
// address, or from this address for any name; the attempt was refused
// without checking its password, and no attempt of the same kind is
// checked before Until. Each attempt made before Until is counted as one
// more failure and lengthens the wait.
type ThrottledError struct {
	Until time.Time
	// Who is "user NAME from address ADDR" or "address ADDR".
	Who string
}

func (e *ThrottledError) Error() string {
	return fmt.Sprintf("admin: too many failed logins of %s: no password is checked until %s", e.Who, e.Until.UTC().Format(time.RFC3339))
}

// Authenticator checks logins, sessions and bearer tokens.
type Authenticator interface {
	// Login checks name and password from remoteAddr (host of the client
	// address) and opens a session: ErrBadCredentials, *ThrottledError or
	// ErrBusy otherwise.
	Login(ctx context.Context, name, password, remoteAddr string) (Session, error)
	// Session returns the live session id names (and extends its idle
	// expiry); false when unknown or expired.
	Session(id string) (Session, bool)
	// Logout ends the session id names; unknown ids are ignored.
	Logout(id string)
	// Bearer returns the user whose API token this is (ErrNoToken).
	Bearer(ctx context.Context, token string) (User, error)
	// HasUsers reports whether any user exists (a fresh install has none).
	HasUsers(ctx context.Context) (bool, error)
}
