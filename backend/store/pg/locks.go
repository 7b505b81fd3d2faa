package pgstore

// The first keys of the advisory locks the store takes (the two-key form,
// pg_advisory_xact_lock(class, key)), each class one kind of turn-taking.
// The Go code's are all here, the migrations' functions' own in
// TestLockClassesDiffer, which checks that no two are the same: two
// kinds sharing a class would make unrelated work wait on each other
// whenever their second keys meet.
const (
	// windowLockClass serializes each network's claims; the second key
	// is a hash of the network.
	windowLockClass = 0x61646c6b // "adlk"
	// prefixLockClass is the same for the claims of a prefix (an IPv6
	// /48, an IPv4 /24), whose lock is taken before its network's, as
	// adlink_record_clicks takes them.
	prefixLockClass = 0x61646c70 // "adlp"
	// pageLockClass, siteLockClass and queueLockClass make the pushes of
	// one page, of one site near its share, and of every site near the
	// queue's bound, take turns; the second key is a hash of the page or
	// the site, or 0.
	pageLockClass  = 0x61646c67 // "adlg"
	siteLockClass  = 0x61646c65 // "adle"
	queueLockClass = 0x61646c71 // "adlq"

	// retainLockClass lets one server's retention pass run at a time;
	// the second key is a hash of the schema, so that deployments sharing
	// a database in schemas of their own take turns each among themselves.
	retainLockClass = 0x61646c72 // "adlr"
	// reviewLockClass lets one adlink review-sites run at a time on a
	// database; the second key is a hash of the schema, as with
	// retainLockClass.
	reviewLockClass = 0x61646c76 // "adlv"
)
