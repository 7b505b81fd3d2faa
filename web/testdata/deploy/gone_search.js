(gone, q) => {
	window.gone = gone;
	return adlink.search(q, {loc: "de", lang: "de"}).then(
		r => ({links: r.link.length, instances, manifests}), e => ({error: String(e), instances, manifests}));
}
