package configdb

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

// A bcrypt hash's shape; the store does not interpret it.
const (
	hashA = "$2a$04$aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	hashB = "$2a$04$bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

func tokenHashOf(c byte) string { return strings.Repeat(string(c), 64) }

// testUsers is the admin_users contract on one dialect: add, the duplicate
// refusal, lookups by name and by token hash, password and token changes
// with updated_at, removal, and the order of ListUsers.
func testUsers(t *testing.T, open opener) {
	clock := clockwork.NewFakeClockAt(t0)
	db := migrated(t, open(t, clock))
	ctx := ctxT(t)

	if n, err := db.CountUsers(ctx); err != nil || n != 0 {
		t.Fatalf("CountUsers on a fresh database = %d, %v; want 0", n, err)
	}
	for _, u := range []AdminUser{
		{Name: "zoe", Role: "Viewer", PasswordHash: hashA},
		{Name: "Admin", Role: "Administrator", PasswordHash: hashA, TokenHash: tokenHashOf('f')}, // token ignored
		{Name: "admin", Role: "ConfigEditor", PasswordHash: hashB},                               // another name: case counts
		{Name: "ops.team_1@plant-a", Role: "Designer", PasswordHash: hashB},
	} {
		if err := db.AddUser(ctx, u); err != nil {
			t.Fatalf("AddUser(%s): %v", u.Name, err)
		}
	}
	err := db.AddUser(ctx, AdminUser{Name: "zoe", Role: "Administrator", PasswordHash: hashB})
	if !errors.Is(err, ErrExists) {
		t.Fatalf("a second zoe: %v, want ErrExists", err)
	}
	if n, _ := db.CountUsers(ctx); n != 4 {
		t.Fatalf("CountUsers = %d, want 4", n)
	}
	zoe, err := db.User(ctx, "zoe")
	if err != nil {
		t.Fatal(err)
	}
	created := dbTime(t0)
	if zoe.Role != "Viewer" || zoe.PasswordHash != hashA || zoe.TokenHash != "" ||
		!zoe.CreatedAt.Equal(created) || !zoe.UpdatedAt.Equal(created) || zoe.CreatedAt.Location() != time.UTC {
		t.Fatalf("zoe after the refused duplicate = %+v", zoe)
	}
	if u, _ := db.User(ctx, "Admin"); u.TokenHash != "" || u.Role != "Administrator" {
		t.Fatalf("Admin = %+v: AddUser must store no token", u)
	}
	if u, _ := db.User(ctx, "admin"); u.Role != "ConfigEditor" {
		t.Fatalf("admin = %+v: names differing in case are distinct", u)
	}
	if _, err := db.User(ctx, "ZOE"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("User(ZOE) = %v, want ErrNotFound (byte-for-byte names)", err)
	}

	// Password and token changes move updated_at, not created_at.
	clock.Advance(time.Minute)
	if err := db.SetUserPassword(ctx, "zoe", hashB); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	if err := db.SetUserTokenHash(ctx, "zoe", tokenHashOf('a')); err != nil {
		t.Fatal(err)
	}
	zoe, _ = db.User(ctx, "zoe")
	if zoe.PasswordHash != hashB || zoe.TokenHash != tokenHashOf('a') ||
		!zoe.CreatedAt.Equal(created) || !zoe.UpdatedAt.Equal(dbTime(t0.Add(2*time.Minute))) {
		t.Fatalf("zoe after passwd and token = %+v", zoe)
	}
	if u, err := db.UserByTokenHash(ctx, tokenHashOf('a')); err != nil || u.Name != "zoe" {
		t.Fatalf("UserByTokenHash = %+v, %v; want zoe", u, err)
	}
	// A new token replaces the old; two users cannot share one; "" clears.
	if err := db.SetUserTokenHash(ctx, "zoe", tokenHashOf('b')); err != nil {
		t.Fatal(err)
	}
	if _, err := db.UserByTokenHash(ctx, tokenHashOf('a')); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the replaced token: %v, want ErrNotFound", err)
	}
	if err := db.SetUserTokenHash(ctx, "admin", tokenHashOf('b')); err == nil {
		t.Fatal("two users got the same token hash")
	}
	if err := db.SetUserTokenHash(ctx, "admin", tokenHashOf('c')); err != nil {
		t.Fatal(err)
	}
	if err := db.SetUserTokenHash(ctx, "admin", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := db.UserByTokenHash(ctx, tokenHashOf('c')); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a cleared token: %v, want ErrNotFound", err)
	}

	// Another handle (node) sees the same users, sorted byte for byte.
	list, err := open(t, nil).ListUsers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, u := range list {
		names = append(names, u.Name)
	}
	if got, want := strings.Join(names, ","), "Admin,admin,ops.team_1@plant-a,zoe"; got != want {
		t.Fatalf("ListUsers = %s, want %s", got, want)
	}
	if list[3].TokenHash != tokenHashOf('b') || list[1].TokenHash != "" {
		t.Fatalf("ListUsers token hashes: %+v", list)
	}

	if err := db.RemoveUser(ctx, "zoe"); err != nil {
		t.Fatal(err)
	}
	if err := db.RemoveUser(ctx, "zoe"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("removing zoe twice: %v, want ErrNotFound", err)
	}
	if _, err := db.UserByTokenHash(ctx, tokenHashOf('b')); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a removed user's token: %v, want ErrNotFound", err)
	}
	for name, err := range map[string]error{
		"SetUserPassword":  db.SetUserPassword(ctx, "nobody", hashA),
		"SetUserTokenHash": db.SetUserTokenHash(ctx, "nobody", tokenHashOf('d')),
	} {
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("%s of a missing user: %v, want ErrNotFound", name, err)
		}
	}
	if n, _ := db.CountUsers(ctx); n != 3 {
		t.Fatalf("CountUsers after a removal = %d, want 3", n)
	}

	// Malformed values are refused before the database is asked.
	for _, bad := range []error{
		db.AddUser(ctx, AdminUser{Name: "x", Role: "", PasswordHash: hashA}),
		db.AddUser(ctx, AdminUser{Name: "x", Role: "Viewer"}),
		db.SetUserTokenHash(ctx, "admin", "ABC"),
		db.SetUserTokenHash(ctx, "admin", strings.ToUpper(tokenHashOf('e'))),
		func() error { _, err := db.UserByTokenHash(ctx, ""); return err }(),
	} {
		if !errors.Is(bad, ErrInvalid) {
			t.Errorf("malformed value: %v, want ErrInvalid", bad)
		}
	}
}

// testUsersConcurrentAdd: several nodes adding the same name at once store
// it once; every other gets ErrExists.
func testUsersConcurrentAdd(t *testing.T, open opener) {
	const nodes = 4
	dbs := make([]*DB, nodes)
	for i := range dbs {
		dbs[i] = open(t, nil)
	}
	migrated(t, dbs[0])
	ctx := ctxT(t)
	errs := make([]error, nodes)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, db := range dbs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = db.AddUser(ctx, AdminUser{Name: "admin", Role: "Administrator", PasswordHash: hashA})
		}()
	}
	close(start)
	wg.Wait()
	ok, exists := 0, 0
	for i, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, ErrExists):
			exists++
		default:
			t.Errorf("node %d: %v", i, err)
		}
	}
	if ok != 1 || exists != nodes-1 {
		t.Fatalf("%d added, %d ErrExists; want 1 and %d", ok, exists, nodes-1)
	}
}

func TestCheckUserName(t *testing.T) {
	for _, ok := range []string{"a", "admin", "J.Doe@plant-3", "x_y-z.0", strings.Repeat("n", MaxUserNameLen)} {
		if err := CheckUserName(ok); err != nil {
			t.Errorf("CheckUserName(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "a b", "ü", "admin;drop", "a/b", "tab\t", strings.Repeat("n", MaxUserNameLen+1), strings.Repeat("é", 300)} {
		err := CheckUserName(bad)
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("CheckUserName(%q) = %v, want ErrInvalid", bad, err)
			continue
		}
		if !strings.Contains(err.Error(), "accepted are 1 to 64 characters of A-Z, a-z, 0-9 and . _ @ -") {
			t.Errorf("error %q does not name what is accepted", err)
		}
		if len(err.Error()) > 300 {
			t.Errorf("error for a %d-byte name is %d bytes long", len(bad), len(err.Error()))
		}
	}
}
