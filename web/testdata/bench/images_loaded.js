Promise.all([...document.images].map(i => i.complete ||
	new Promise(r => { i.addEventListener("load", () => r(true)); i.addEventListener("error", () => r(true)); })))
