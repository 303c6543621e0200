package live

import _ "embed"

// pageHTML is the page: markup, style and script inline, loading nothing from elsewhere.
//
//go:embed page.html
var pageHTML []byte
