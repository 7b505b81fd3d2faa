adlink.ready.then(() => {
	const b = document.querySelector("[data-adlink=box]");
	return {
		parent: b ? (b.parentElement.id || b.parentElement.localName) : "",
		afterText: b ? (b.previousElementSibling || {}).id || "" : "",
		last: b ? b === document.body.lastElementChild : false,
	};
})
