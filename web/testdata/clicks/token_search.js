(shift) => {
	window.clockShift = shift;
	return adlink.search("iphone 15").then(r => ({tok: new URL(r.link[0].ad).searchParams.get("tok"), toks: manifestToks}));
}
