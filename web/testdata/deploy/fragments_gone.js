(() => {
	window.gone = false;
	window.manifests = 0;
	const f = window.fetch;
	window.fetch = function (u) {
		if (String(u).includes("/v2/shards?")) manifests++;
		if (gone && /\/v2\/shards\/[0-9a-f]{64}\/[0-9]+$/.test(String(u))) return Promise.resolve(new Response("gone", {status: 404}));
		return f.apply(this, arguments);
	};
})()
