//go:build wasip1

package main

// The module is built started (wasm/module.Preinit), so this init runs when
// it is built, not in a page: it leaves the goroutine that runs the exports
// with a stack of 32 KB, more than a first match grows it to. A page's
// first match_page otherwise grew it from 4 to 8 KB, and copying a stack
// runs, and V8 compiles on their first call, the runtime's newstack,
// copystack and the stack maps' readers: 33 of the functions the first
// match of the demo article called, 52 KB of their 247 KB of code. The
// stack stays: the module is started with GODEBUG=gcshrinkstackoff=1
// (wasm/module's env), so the collector never shrinks it.
func init() { growStack(nil) }

// stackFrame is the frame growStack takes: with the caller's, the stack
// grows to 32 KB.
const stackFrame = 20 << 10

// growStack takes a frame of stackFrame bytes, so the stack grows to hold
// it, and returns a byte of it so that the compiler keeps it.
//
//go:noinline
func growStack(b []byte) byte {
	var frame [stackFrame]byte
	frame[len(b)] = 1
	return touch(frame[:])
}

//go:noinline
func touch(b []byte) byte { return b[len(b)-1] | b[0] }
