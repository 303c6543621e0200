// Package stress holds the test that puts every concurrent ward type under traffic at once while
// GOMAXPROCS moves up and down, as a container runtime moves it when a CPU limit changes. It has
// no code of its own.
package stress
