package failurewindow

import "unsafe"

// unsafeString aliases b, as a server that keys by a request buffer might.
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
