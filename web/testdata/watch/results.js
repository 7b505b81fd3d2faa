// Shows the results of the search q below the page's end, out of view,
// in place of the last ones, as a search page would, and has the widget
// watch them; resolves to how many it watches.
(q) => adlink.search(q, {fields: "price,logo"}).then(body => {
	let list = document.getElementById('results');
	if (!list) {
		list = document.createElement('ul');
		list.id = 'results';
		list.style.marginTop = '8000px';
		document.body.appendChild(list);
	}
	list.textContent = '';
	body.link.forEach(l => {
		const li = document.createElement('li'), a = document.createElement('a');
		a.href = l.ad;
		a.textContent = l.title;
		li.appendChild(a);
		list.appendChild(li);
	});
	return adlink.watch(list);
})
