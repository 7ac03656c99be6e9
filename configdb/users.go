package configdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// ErrExists is wrapped when a row to be added is already there (AddUser
// with a name that is taken).
var ErrExists = errors.New("configdb: already exists")

// MaxUserNameLen is the longest admin user name, in characters.
const MaxUserNameLen = 64

// AdminUser is an admin_users row: one user of the admin pages and API.
type AdminUser struct {
	// Name is 1 to 64 characters of A-Z a-z 0-9 . _ @ - (CheckUserName),
	// compared byte for byte.
	Name string
	// Role is the role name (admin.Roles); the store does not interpret it.
	Role string
	// PasswordHash is the bcrypt hash of the password, never the password.
	PasswordHash string
	// TokenHash is the lower-case hex SHA-256 of the user's API token; ""
	// when the user has none.
	TokenHash string
	// CreatedAt is when AddUser stored the row; UpdatedAt when the row last
	// changed (password or token). Both from the handle's clock, in UTC.
	CreatedAt time.Time
	UpdatedAt time.Time
}

// CheckUserName returns an ErrInvalid error naming what is accepted unless
// name is 1 to 64 characters of A-Z, a-z, 0-9, '.', '_', '@' and '-'.
func CheckUserName(name string) error {
	bad := name == "" || len(name) > MaxUserNameLen
	for i := 0; i < len(name) && !bad; i++ {
		c := name[i]
		bad = !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '.' || c == '_' || c == '@' || c == '-')
	}
	if bad {
		shown := name
		if len(shown) > MaxUserNameLen+16 {
			shown = shown[:MaxUserNameLen+16] + "…"
		}
		return fmt.Errorf("%w: user name %q: accepted are 1 to %d characters of A-Z, a-z, 0-9 and . _ @ -",
			ErrInvalid, shown, MaxUserNameLen)
	}
	return nil
}

// checkTokenHash accepts "" (no token) or 64 lower-case hex digits.
func checkTokenHash(h string) error {
	if h == "" {
		return nil
	}
	ok := len(h) == 64
	for i := 0; i < len(h) && ok; i++ {
		ok = h[i] >= '0' && h[i] <= '9' || h[i] >= 'a' && h[i] <= 'f'
	}
	if !ok {
		return fmt.Errorf("%w: token hash: accepted is the lower-case hex SHA-256 (64 characters 0-9 a-f) of the token", ErrInvalid)
	}
	return nil
}

func checkPasswordHash(h string) error {
	if h == "" {
		return fmt.Errorf("%w: password hash is empty", ErrInvalid)
	}
	if len(h) > maxKeyLen {
		return fmt.Errorf("%w: password hash is longer than %d characters", ErrInvalid, maxKeyLen)
	}
	return nil
}

// AddUser stores a new user with no API token; u.TokenHash and the times
// are ignored (CreatedAt and UpdatedAt become the handle's clock). A name
// that is taken returns an error wrapping ErrExists and changes nothing,
// also when two nodes add the same name at once.
func (db *DB) AddUser(ctx context.Context, u AdminUser) error {
	if err := CheckUserName(u.Name); err != nil {
		return err
	}
	if err := checkKey("user role", u.Role); err != nil {
		return err
	}
	if err := checkPasswordHash(u.PasswordHash); err != nil {
		return err
	}
	res, err := db.sql.ExecContext(ctx, db.q.insertUser, u.Name, u.Role, u.PasswordHash, db.now())
	if err != nil {
		return fmt.Errorf("configdb: add user %q: %w", u.Name, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("configdb: add user %q: %w", u.Name, err)
	}
	if n == 0 {
		return fmt.Errorf("%w: user %q (remove it first, or change its password)", ErrExists, u.Name)
	}
	return nil
}

// SetUserPassword replaces the password hash of an existing user
// (ErrNotFound otherwise). Its API token is kept.
func (db *DB) SetUserPassword(ctx context.Context, name, passwordHash string) error {
	if err := CheckUserName(name); err != nil {
		return err
	}
	if err := checkPasswordHash(passwordHash); err != nil {
		return err
	}
	return db.updateUser(ctx, "set the password of", name, db.q.setUserPassword, passwordHash, db.now(), name)
}

// SetUserTokenHash replaces the API token hash of an existing user
// (ErrNotFound otherwise); "" removes the token. tokenHash is the
// lower-case hex SHA-256 of the token.
func (db *DB) SetUserTokenHash(ctx context.Context, name, tokenHash string) error {
	if err := CheckUserName(name); err != nil {
		return err
	}
	if err := checkTokenHash(tokenHash); err != nil {
		return err
	}
	var v any // NULL: many users may have no token under the unique index
	if tokenHash != "" {
		v = tokenHash
	}
	return db.updateUser(ctx, "set the API token of", name, db.q.setUserToken, v, db.now(), name)
}

// RemoveUser deletes a user (ErrNotFound when there is none of that name).
func (db *DB) RemoveUser(ctx context.Context, name string) error {
	if err := CheckUserName(name); err != nil {
		return err
	}
	return db.updateUser(ctx, "remove", name, db.q.deleteUser, name)
}

// updateUser runs a statement that must affect the row of name.
func (db *DB) updateUser(ctx context.Context, what, name, query string, args ...any) error {
	res, err := db.sql.ExecContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("configdb: %s user %q: %w", what, name, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("configdb: %s user %q: %w", what, name, err)
	}
	if n == 0 {
		return fmt.Errorf("%w: no user %q", ErrNotFound, name)
	}
	return nil
}

// ListUsers returns every user sorted by name, byte for byte (the same
// order in every dialect, whatever the database's collation).
func (db *DB) ListUsers(ctx context.Context) ([]AdminUser, error) {
	rows, err := db.sql.QueryContext(ctx, db.q.listUsers)
	if err != nil {
		return nil, fmt.Errorf("configdb: list users: %w", err)
	}
	defer rows.Close()
	var out []AdminUser
	for rows.Next() {
		u, err := scanUser(rows)
		if err != nil {
			return nil, fmt.Errorf("configdb: list users: %w", err)
		}
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("configdb: list users: %w", err)
	}
	slices.SortFunc(out, func(a, b AdminUser) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// User returns the user of that name (ErrNotFound when there is none; an
// ErrInvalid error for a malformed name, without asking the database).
func (db *DB) User(ctx context.Context, name string) (AdminUser, error) {
	if err := CheckUserName(name); err != nil {
		return AdminUser{}, err
	}
	return db.oneUser(ctx, fmt.Sprintf("no user %q", name), db.q.userByName, name)
}

// UserByTokenHash returns the user whose API token has this lower-case hex
// SHA-256 (ErrNotFound when none has).
func (db *DB) UserByTokenHash(ctx context.Context, tokenHash string) (AdminUser, error) {
	if tokenHash == "" {
		return AdminUser{}, fmt.Errorf("%w: token hash is empty", ErrInvalid)
	}
	if err := checkTokenHash(tokenHash); err != nil {
		return AdminUser{}, err
	}
	return db.oneUser(ctx, "no user has this API token", db.q.userByToken, tokenHash)
}

// CountUsers returns how many users exist (0 on a fresh install).
func (db *DB) CountUsers(ctx context.Context) (int, error) {
	var n int
	if err := db.sql.QueryRowContext(ctx, db.q.countUsers).Scan(&n); err != nil {
		return 0, fmt.Errorf("configdb: count users: %w", err)
	}
	return n, nil
}

func (db *DB) oneUser(ctx context.Context, missing, query string, arg string) (AdminUser, error) {
	u, err := scanUser(db.sql.QueryRowContext(ctx, query, arg))
	if errors.Is(err, sql.ErrNoRows) {
		return AdminUser{}, fmt.Errorf("%w: %s", ErrNotFound, missing)
	}
	if err != nil {
		return AdminUser{}, fmt.Errorf("configdb: read user: %w", err)
	}
	return u, nil
}

// scanner is *sql.Row or *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

func scanUser(s scanner) (AdminUser, error) {
	var u AdminUser
	var token sql.NullString
	if err := s.Scan(&u.Name, &u.Role, &u.PasswordHash, &token, &u.CreatedAt, &u.UpdatedAt); err != nil {
		return AdminUser{}, err
	}
	u.TokenHash = strings.TrimSpace(token.String) // CHAR(64) pads nothing at 64, but be safe
	u.CreatedAt, u.UpdatedAt = u.CreatedAt.UTC(), u.UpdatedAt.UTC()
	return u, nil
}
