package failurewindow_test

import (
	"fmt"
	"time"

	"github.com/wardgo/ward/failurewindow"
)

func ExampleWindow_AdmitAt() {
	sec := int64(time.Second)
	w, _ := failurewindow.New(3, time.Minute)
	addr := "198.51.100.23"
	for i := int64(0); i < 3; i++ {
		w.RecordAt(addr, i*sec) // three failed logins at 0 s, 1 s, 2 s
	}
	ok, wait := w.AdmitAt(addr, 10*sec)
	fmt.Println(ok, wait) // the failure at 0 s leaves the window at 60 s
	ok, _ = w.AdmitAt(addr, 60*sec)
	fmt.Println(ok)
	ok, _ = w.AdmitAt("203.0.113.5", 10*sec)
	fmt.Println(ok)
	// Output:
	// false 50s
	// true
	// true
}

func ExampleNew() {
	_, err := failurewindow.New(0, time.Minute)
	fmt.Println(err)
	// Output: failurewindow: invalid parameter: limit = 0, want > 0
}
