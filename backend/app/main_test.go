package app

import (
	"os"
	"testing"

	"github.com/adlink/adlink/internal/testpg"
)

// The replica tests share one Postgres server, started here.
func TestMain(m *testing.M) { os.Exit(testpg.Main(m)) }
