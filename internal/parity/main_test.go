package parity

import (
	"os"
	"testing"

	"github.com/adlink/adlink/internal/testenv"
	"github.com/adlink/adlink/internal/wasmhost"
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	defer wasmhost.CloseShared()
	return testenv.Run(m, testenv.Options{Matcher: true})
}
