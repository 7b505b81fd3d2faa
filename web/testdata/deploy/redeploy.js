(url, sha256) => {
	window.compiles = 0;
	const cs = WebAssembly.compileStreaming;
	WebAssembly.compileStreaming = function () { compiles++; return cs.apply(this, arguments); };
	window.deployed = false;
	const f = window.fetch;
	window.fetch = function (u, init) {
		if (!String(u).includes("/v2/shards?")) return f.apply(this, arguments);
		return f.call(this, u, Object.assign({}, init, {cache: "no-store"})).then(r => r.json()).then(m => {
			if (deployed) {
				m.shard = {url: url, sha256: sha256};
				m.matcher.url += "&deploy=2"; // a new module, as a deploy brings
			}
			return new Response(JSON.stringify(m), {status: 200, headers: {"Content-Type": "application/json"}});
		});
	};
}
