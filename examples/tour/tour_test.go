package main

import "os"

func Example() {
	tour(os.Stdout)
	// Output:
	// breaker: backend down 2 s, 187 of 200 calls refused, ratio 1.00
	// shedder: 60 calls at 95% CPU against a capacity of 10, 25 admitted
	// Knee     limit 20, after ten fast samples 1000, after a slow dropped one 250
	// AIMD     limit 20, after ten fast samples 30, after a slow dropped one 27
	// Vegas    limit 20, after ten fast samples 74, after a slow dropped one 73
	// Gradient limit 20, after ten fast samples 28, after a slow dropped one 26
	// MinRTT   limit 50, after ten fast samples 137, after a slow dropped one 134
	// Fixed    limit 20, after ten fast samples 20, after a slow dropped one 20
	// bucket: 5 taken at once, the next in 100ms
	// backoff: [100ms 200ms]
}
