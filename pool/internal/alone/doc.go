// Package alone holds a test built as a user's program builds the pool: its test imports
// github.com/wardgo/ward/pool and nothing else of ward's. Go compiles a generic type in the
// package that instantiates it, and there the compiler can inline a call into another package
// only if the export data it reads carries that function's body; in a package that imports pool
// alone it reads less than inside ward's module, where other imports bring those bodies in. The
// test proves the pool's idle path allocates nothing in such a build.
package alone
