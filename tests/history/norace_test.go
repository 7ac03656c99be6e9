//go:build !race

package history_test

const raceBuild = false
