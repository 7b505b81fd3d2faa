(q, dist) => {
	document.getElementById('q').value = q;
	document.getElementById('dist').value = dist;
	document.getElementById('search').requestSubmit();
	return true;
}
