async (qs, fields, warmMs) => {
	const Instance = WebAssembly.Instance;
	let ex;
	WebAssembly.Instance = function (m, i) { const inst = new Instance(m, i); ex = inst.exports; return inst; };
	const encode = TextEncoder.prototype.encode, reqs = [];
	TextEncoder.prototype.encode = function (s) { const b = encode.call(this, s); reqs.push(b); return b; };
	const ads = [];
	for (const [q, d] of qs) ads.push((await adlink.search(q, {"ctx.dist": d, fields})).link.map(l => l.ad));
	WebAssembly.Instance = Instance;
	TextEncoder.prototype.encode = encode;
	if (!ex || reqs.length !== qs.length) throw new Error("captured " + reqs.length + " requests of " + qs.length);
	const search = async () => { for (const [q, d] of qs) await adlink.search(q, {"ctx.dist": d, fields}); };
	const module = () => {
		for (const r of reqs) {
			const p = ex.alloc(r.length) >>> 0;
			new Uint8Array(ex.memory.buffer, p, r.length).set(r);
			const res = ex.match_search(p, r.length);
			ex.free(p);
			ex.free(Number(res >> 32n));
		}
	};
	let t0 = performance.now();
	await search();
	const first = (performance.now() - t0) * 1000 / qs.length;
	for (t0 = performance.now(); performance.now() - t0 < warmMs; ) await search();
	window.searchPass = async (reps) => {
		let t = performance.now();
		for (let r = 0; r < reps; r++) await search();
		const full = performance.now() - t;
		t = performance.now();
		for (let r = 0; r < reps; r++) module();
		return [full, performance.now() - t];
	};
	return {first, ads};
}
