(href) => {
	// An ad URL of a server answer, placed as a publisher places it.
	document.body.innerHTML = "";
	const a = document.createElement("a");
	a.id = "server-ad";
	a.href = href;
	a.textContent = "an ad";
	a.style.cssText = "display:block;padding:20px;font-size:30px";
	document.body.append(a);
	return true;
}
