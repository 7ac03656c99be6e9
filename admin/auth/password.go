package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/bcrypt"
)

// Password rules: bcrypt reads no more than 72 bytes, so a longer password
// would be silently cut; fewer than 10 is too easy to guess.
const (
	MinPasswordBytes = 10
	MaxPasswordBytes = 72
)

// DefaultBcryptCost is the bcrypt cost of new hashes (2^12 rounds: about a
// quarter of a second per check on one core of a typical server).
const DefaultBcryptCost = 12

// TokenPrefix begins every API token, so that a leaked token is easy to
// recognise (secret scanners, logs).
const TokenPrefix = "otk_"

// ErrWeakPassword is wrapped by CheckPasswordRules and HashPassword.
var ErrWeakPassword = errors.New("password refused")

// CheckPasswordRules returns an error wrapping ErrWeakPassword unless the
// password is 10 to 72 bytes long.
func CheckPasswordRules(password string) error {
	if n := len(password); n < MinPasswordBytes || n > MaxPasswordBytes {
		return fmt.Errorf("%w: it is %d bytes long: accepted are %d to %d bytes (UTF-8)",
			ErrWeakPassword, n, MinPasswordBytes, MaxPasswordBytes)
	}
	return nil
}

// HashPassword checks the password rules and returns the bcrypt hash of
// password at cost (0 = DefaultBcryptCost; accepted are 4 to 31).
func HashPassword(password string, cost int) (string, error) {
	if err := CheckPasswordRules(password); err != nil {
		return "", err
	}
	if cost == 0 {
		cost = DefaultBcryptCost
	}
	if cost < bcrypt.MinCost || cost > bcrypt.MaxCost {
		return "", fmt.Errorf("bcrypt cost %d: accepted are %d to %d", cost, bcrypt.MinCost, bcrypt.MaxCost)
	}
	h, err := bcrypt.GenerateFromPassword([]byte(password), cost)
	if err != nil {
		return "", fmt.Errorf("hash the password: %w", err)
	}
	return string(h), nil
}

// NewToken returns a new API token ("otk_" and 32 random bytes, base64url)
// and the hash to store for it (TokenHash). The token is shown once; only
// the hash is kept.
func NewToken() (token, hash string) {
	token = TokenPrefix + randomID()
	return token, TokenHash(token)
}

// TokenHash is what the Config DB stores for an API token: the lower-case
// hex SHA-256 of the whole token text.
func TokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// tokenLen is the length of every token NewToken makes.
var tokenLen = len(TokenPrefix) + base64.RawURLEncoding.EncodedLen(32)

// wellFormedToken: a token NewToken could have made. Anything else is
// refused without asking the Config DB.
func wellFormedToken(t string) bool {
	if len(t) != tokenLen || !strings.HasPrefix(t, TokenPrefix) {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(t[len(TokenPrefix):])
	return err == nil
}

// idLen is the length of a session id or CSRF token.
var idLen = base64.RawURLEncoding.EncodedLen(32)

// randomID is 32 bytes from crypto/rand, base64url without padding (43
// characters).
func randomID() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // never fails: crypto/rand aborts the process instead
	return base64.RawURLEncoding.EncodeToString(b[:])
}
