(() => {
	adlink.refresh();
	const p = document.querySelector("#a p");
	return {text: p.textContent, nodes: p.childNodes.length};
})()
