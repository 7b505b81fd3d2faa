(() => {
	window.instances = 0;
	const I = WebAssembly.Instance;
	WebAssembly.Instance = function (m, imports) { instances++; return new I(m, imports); };
})()
