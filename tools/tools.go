//go:build tools

// Package tools pins the linters ward's Makefile runs, apart from the library's own go.mod, so a
// user of ward never downloads them.
package tools

import _ "honnef.co/go/tools/cmd/staticcheck"
