package user

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestShape: each package here imports the one ward package it is named for and the standard
// library, nothing else, in its code and its tests: the shape of a user's package.
func TestShape(t *testing.T) {
	want := map[string]string{
		"adaptive":      "github.com/wardgo/ward/adaptive",
		"breaker":       "github.com/wardgo/ward/breaker",
		"shed":          "github.com/wardgo/ward/shed",
		"rate":          "github.com/wardgo/ward/rate",
		"window":        "github.com/wardgo/ward/atomicwindow",
		"pool":          "github.com/wardgo/ward/pool",
		"failurewindow": "github.com/wardgo/ward/failurewindow",
	}
	dirs, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		ward, ok := want[d.Name()]
		if !ok {
			t.Errorf("%s: a package with no ward package named for it", d.Name())
			continue
		}
		seen++
		files, _ := filepath.Glob(filepath.Join(d.Name(), "*.go"))
		uses := false
		for _, f := range files {
			file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range file.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				std := !strings.Contains(strings.SplitN(path, "/", 2)[0], ".")
				switch {
				case path == ward:
					uses = true
				case !std:
					t.Errorf("%s imports %s: only %s and the standard library", f, path, ward)
				}
			}
		}
		if !uses {
			t.Errorf("%s does not import %s", d.Name(), ward)
		}
	}
	if seen != len(want) {
		t.Errorf("%d packages, want %d", seen, len(want))
	}
}
