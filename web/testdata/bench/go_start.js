async (url, shardURL, req) => {
	const t0 = performance.now();
	// The shard, when asked for, is fetched at the same time as the module.
	const [module, shard] = await Promise.all([
		WebAssembly.compileStreaming(fetch(url)),
		shardURL ? fetch(shardURL).then((r) => r.arrayBuffer()).then((b) => new Uint8Array(b)) : null,
	]);
	const t1 = performance.now();
	let memory;
	const view = () => new DataView(memory.buffer);
	const env = new TextEncoder().encode("GOGC=200\0");
	const wasi = {};
	for (const i of WebAssembly.Module.imports(module)) wasi[i.name] = () => 0;
	Object.assign(wasi, {
		environ_sizes_get: (n, size) => { view().setUint32(n, 1, true); view().setUint32(size, env.length, true); return 0; },
		environ_get: (ptrs, buf) => { view().setUint32(ptrs, buf, true); new Uint8Array(memory.buffer, buf, env.length).set(env); return 0; },
		args_sizes_get: (n, size) => { view().setUint32(n, 0, true); view().setUint32(size, 0, true); return 0; },
		clock_time_get: (id, precision, out) => { view().setBigUint64(out, BigInt(Math.round((performance.timeOrigin + performance.now()) * 1e6)), true); return 0; },
		random_get: (p, n) => { crypto.getRandomValues(new Uint8Array(memory.buffer, p, n)); return 0; },
	});
	const ex = new WebAssembly.Instance(module, { wasi_snapshot_preview1: wasi }).exports;
	memory = ex.memory;
	ex._initialize();
	const t2 = performance.now();
	const put = (b) => { const p = ex.alloc(b.length) >>> 0; new Uint8Array(memory.buffer, p, b.length).set(b); return p; };
	if (shard) {
		const st = ex.load_shard(put(shard), shard.length);
		if (st !== 0) throw new Error("load_shard: " + st);
	}
	const t3 = performance.now();
	// A page's request, when given: the first match_page, whose answer must
	// hold ads.
	if (req) {
		const b = new TextEncoder().encode(req);
		const r = ex.match_page(put(b), b.length);
		const text = r ? new TextDecoder().decode(new Uint8Array(memory.buffer, Number(r >> 32n), Number(r & 0xffffffffn))) : "";
		if (!text.startsWith('{"link":[{')) throw new Error("match_page: " + text.slice(0, 200));
	}
	const t4 = performance.now();
	const sent = performance.getEntriesByName(new URL(url, location.href).href)[0];
	return [t1 - t0, t2 - t1, t2 - t0, sent ? sent.encodedBodySize : 0, t3 - t0, t4 - t0];
}
