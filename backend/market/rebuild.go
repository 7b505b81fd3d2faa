//go:build !wasip1

package market

import "github.com/adlink/adlink/match"

// rebuildIndex indexes a changed catalog beside the index before it.
var rebuildIndex = match.RebuildBeside
