(() => {
	window.manifestURLs = [];
	const f = window.fetch;
	window.fetch = function (u) {
		if (String(u).includes("/v2/shards?")) manifestURLs.push(String(u));
		return f.apply(this, arguments);
	};
})()
