(() => {
	const n = document.getElementById("n"), startLinked = n.querySelector("a") !== null && n.firstChild.nodeValue === "";
	n.normalize();
	document.getElementById("slider").appendChild(document.getElementById("c").cloneNode(true));
	adlink.refresh();
	const copy = document.querySelector("#slider p");
	return {startLinked, n: n.textContent, copy: copy.textContent, orig: document.getElementById("c").textContent, copyLinks: copy.querySelectorAll("a").length};
})()
