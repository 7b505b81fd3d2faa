() => ({
	links: document.querySelectorAll("a.adlink-intext").length,
	text: document.getElementById("p").textContent,
	held: window.held ? held.map(n => n.nodeValue) : [],
	attached: window.held ? held.every(n => n.parentNode === document.getElementById("p")) : true,
})
