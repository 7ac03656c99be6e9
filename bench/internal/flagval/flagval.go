// Package flagval reads the compound values of the harnesses'
// command-line flags.
package flagval

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Pair reads text as two whole numbers joined by sep ("1000:1" with sep
// ":"). first and second name the numbers in errors; want describes the
// expected form in the error of a text without sep.
func Pair(text, sep, first, second, want string) (a, b int, err error) {
	x, y, ok := strings.Cut(text, sep)
	if !ok {
		return 0, 0, errors.New("want " + want)
	}
	if a, err = strconv.Atoi(x); err != nil {
		return 0, 0, fmt.Errorf("%s: %w", first, err)
	}
	if b, err = strconv.Atoi(y); err != nil {
		return 0, 0, fmt.Errorf("%s: %w", second, err)
	}
	return a, b, nil
}
