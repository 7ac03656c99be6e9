package demo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/otopcua/otopcua/admin"
	"github.com/otopcua/otopcua/admin/auth"
	"github.com/otopcua/otopcua/configdb"
)

// ViewerName is the Viewer user the demo makes in its Config DB, so that
// it reads its nodes' cluster views with an API token as any operator's
// tool would: the nodes run as shipped, their reports signed in.
const ViewerName = "demo-viewer"

// viewerToken adds ViewerName (role Viewer, a random password nobody is
// told: `otopcua user passwd` sets one to sign in to the pages) to the
// Config DB in dir, when it is not there from an earlier run in the same
// folder, and issues it a new API token, which it returns.
func viewerToken(ctx context.Context, dir string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	db, err := configdb.Open(ctx, "sqlite", ConfigDBConnectionString(dir))
	if err != nil {
		return "", err
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		return "", err
	}
	password, _ := auth.NewToken()
	hash, err := auth.HashPassword(password[len(auth.TokenPrefix):], 0)
	if err != nil {
		return "", err
	}
	err = db.AddUser(ctx, configdb.AdminUser{Name: ViewerName, Role: string(admin.RoleViewer), PasswordHash: hash})
	if err != nil && !errors.Is(err, configdb.ErrExists) {
		return "", fmt.Errorf("add the user %s: %w", ViewerName, err)
	}
	token, tokenHash := auth.NewToken()
	if err := db.SetUserTokenHash(ctx, ViewerName, tokenHash); err != nil {
		return "", fmt.Errorf("issue the token of %s: %w", ViewerName, err)
	}
	return token, nil
}
