(answer) => {
	const f = window.fetch;
	window.fetch = function (u, init) {
		if (!String(u).includes("/v2/page/link?")) return f.apply(this, arguments);
		return Promise.resolve(new Response(answer, {status: 200, headers: {"Content-Type": "application/json"}}));
	};
}
